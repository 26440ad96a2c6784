// SPDX-License-Identifier: GPL-2.0
/* a device state machine driven with start/stop commands */
#include <linux/module.h>
#include <linux/proc_fs.h>
#include <linux/uaccess.h>
#include <linux/slab.h>
#include <linux/string.h>


enum kgym_state { KGYM_IDLE, KGYM_RUNNING };

static enum kgym_state kgym_state = KGYM_IDLE;
static DEFINE_MUTEX(kgym_lock);

static noinline int kgym_warn_start(void)
{
	WARN_ON(kgym_state != KGYM_IDLE);
	kgym_state = KGYM_RUNNING;
	return 0;
}

static ssize_t kgym_warn_write(struct file *file, const char __user *ubuf,
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
	if (!strcmp(cmd, "start"))
		err = kgym_warn_start();
	else if (!strcmp(cmd, "stop"))
		kgym_state = KGYM_IDLE;
	else
		err = -EINVAL;
	mutex_unlock(&kgym_lock);
	return err ? err : len;
}

static const struct proc_ops kgym_warn_ops = {
	.proc_write = kgym_warn_write,
};

static int __init kgym_warn_init(void)
{
	if (!proc_create("kgym_warn", 0222, NULL, &kgym_warn_ops))
		return -ENOMEM;
	return 0;
}

static void __exit kgym_warn_exit(void)
{
	remove_proc_entry("kgym_warn", NULL);
}

module_init(kgym_warn_init);
module_exit(kgym_warn_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("kernel-gym bundled bug: kgym_warn");
