// SPDX-License-Identifier: GPL-2.0
/* sessions opened and closed through /proc/kgym_uaf; 'stat' reports the last session */
#include <linux/module.h>
#include <linux/proc_fs.h>
#include <linux/uaccess.h>
#include <linux/slab.h>
#include <linux/string.h>


struct kgym_session {
	int id;
	int bytes;
};

static struct kgym_session *kgym_last;
static DEFINE_MUTEX(kgym_lock);
static int kgym_next_id;

static ssize_t kgym_uaf_write(struct file *file, const char __user *ubuf,
			      size_t len, loff_t *off)
{
	char cmd[16] = {};
	int err = 0;

	if (len >= sizeof(cmd))
		return -EINVAL;
	if (copy_from_user(cmd, ubuf, len))
		return -EFAULT;
	strim(cmd);
	mutex_lock(&kgym_lock);
	if (!strcmp(cmd, "open")) {
		kfree(kgym_last);
		kgym_last = kzalloc(sizeof(*kgym_last), GFP_KERNEL);
		if (kgym_last)
			kgym_last->id = ++kgym_next_id;
		else
			err = -ENOMEM;
	} else if (!strcmp(cmd, "close")) {
		kfree(kgym_last);
	} else if (!strcmp(cmd, "stat")) {
		if (kgym_last)
			pr_info("kgym_uaf: session %d, %d bytes\n",
				kgym_last->id, kgym_last->bytes);
	} else {
		err = -EINVAL;
	}
	mutex_unlock(&kgym_lock);
	return err ? err : len;
}

static const struct proc_ops kgym_uaf_ops = {
	.proc_write = kgym_uaf_write,
};

static int __init kgym_uaf_init(void)
{
	if (!proc_create("kgym_uaf", 0222, NULL, &kgym_uaf_ops))
		return -ENOMEM;
	return 0;
}

static void __exit kgym_uaf_exit(void)
{
	remove_proc_entry("kgym_uaf", NULL);
}

module_init(kgym_uaf_init);
module_exit(kgym_uaf_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("kernel-gym bundled bug: kgym_uaf");
